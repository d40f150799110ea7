"""Accounts of the dashboard (issue #28, ADR 0040): who may sign in, and as whom.

- ``users``: :class:`User` (a user's name is a storage config owner's name) and
  :class:`AccountError`, whose message is a sentence for the user.
- ``passwords``: argon2id hashing and verifying, its parameters and their minimums,
  and the minimum strength of a password.
- ``tokens``: personal API tokens for scripts (``Authorization: Bearer``), made here
  and kept only as their SHA-256.
- ``store`` (+ ``queries.sql``): :class:`Accounts`, the users, passwords and tokens on
  PostgreSQL.
- ``guessing``: :class:`Guesses`, counting failed sign-ins per client and per account
  and locking each out for a while that ends by itself.

The sign-in of the web (sessions, the Bearer check, the pages) lives in ``web/``; the
``safelight user`` commands in ``cli/users.py``.
"""
