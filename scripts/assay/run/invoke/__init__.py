"""Invokers: one module per way of calling the app, each owning its own pre-flight checks."""
