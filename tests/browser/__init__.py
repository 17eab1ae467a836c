"""Helpers for the headless-Chromium checks of the generated pages."""
