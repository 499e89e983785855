"""coupler.adapters"""
