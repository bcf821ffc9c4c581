"""Readers and writers of session files, one module per format, and the scanner that finds them."""
