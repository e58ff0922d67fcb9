"""Shipped data (package data of ioa_semantic; read with importlib.resources)."""
