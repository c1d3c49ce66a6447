"""The code graph: a workspace's repos indexed into symbols and edges (``code.index``, a pipeline body) and read
by the ``code.*`` ops. Other parts use it through its ops; it exports nothing else. The parsing worker
(``hangar.codegraph.worker``) imports this package, so it stays empty of imports."""
