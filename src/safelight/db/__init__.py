"""Connecting to PostgreSQL (a given server or the embedded one) and migrating it."""
