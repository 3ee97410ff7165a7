"""Watched sites: their crawl configuration, sites discovered, and their hosting providers."""
