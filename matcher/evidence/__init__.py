"""Evidence kept for takedowns: the WARC archive, trusted timestamps, takedown cases."""
