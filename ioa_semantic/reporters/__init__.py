"""Reporters render decisions and audits (text, JSON, SARIF); they return nothing."""
