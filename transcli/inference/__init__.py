"""Translating with a trained model: searches, the translator, engines, scoring."""
