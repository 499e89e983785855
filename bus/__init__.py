"""coupler.bus"""
