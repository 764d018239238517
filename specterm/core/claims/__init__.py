"""Verdicts and the claims they judge: the verdict rule, the scorecard (P1-P5, Q1-Q6), borderline verdicts, equivalence."""
