"""Ranking of long-term memories: scores, keyword ranking, time, decay and forgetting.

`scoring` combines relevance, importance, recency and use into a `ScoreBreakdown`;
`bm25` ranks keyword candidates; `modes` is the table of retrieval modes; `select`,
`terms`, `dates`, `windows` and `keys` shape queries and index keys; `forgetting` is the
decay and forgetting policy.
"""
