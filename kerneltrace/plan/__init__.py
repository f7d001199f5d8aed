"""The optimization plan: evidence-based rules over stage documents, and the summary document."""
