"""PII removal with Presidio."""
