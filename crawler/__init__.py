"""The Scrapy project that fetches pages from watched sites."""
