"""The memory agent and its parts: the graph, extraction, profiles, tools, the writer.

`builder.create_memory_agent` assembles the agent from `nodes`; `extraction` and `profile`
turn messages into memories and a user profile; `tools` are its memory tools; `writer` runs
its deferred memory writes; `summarizer` keeps working memory small; `forgetting_graph` is
the prebuilt forgetting pass. The public names are exported by the package root.
"""
