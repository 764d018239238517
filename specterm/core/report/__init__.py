"""The report: the analysis of runs into typed objects (types.py), export to md/json/text, the analysis cache, number formatting."""
