"""proxystore"""
