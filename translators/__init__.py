"""coupler.translators"""
