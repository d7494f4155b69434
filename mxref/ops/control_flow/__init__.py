"""Control-flow operators (``_foreach``, ``_while_loop``, ``_cond``) whose bodies are subgraphs."""
