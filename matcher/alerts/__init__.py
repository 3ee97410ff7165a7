"""Alerts of new matches: the rules, their delivery and the channels that send them."""
