"""grouping"""
