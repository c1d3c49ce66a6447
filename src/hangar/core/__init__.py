"""The kernel: what every part stands on. It knows no part, no op and no HTTP (the HTTP edge is
``hangar.httpkit``, one layer up); each module is imported by name, this package re-exports nothing.

Composition
- ``part``: ``Part``, what a part contributes (ops, routes, migrations, events, settings, bodies, start and stop).
- ``context``: ``AppContext``, handed to every part: settings, clock, data directory, databases, secrets, events,
  audit, and the registry of services the parts provide to each other.
- ``principal``: who is calling (``Principal``) and the role they hold (``Role``), the vocabulary of access.

Records
- ``db``: the databases (server, one per workspace): SQLAlchemy Core, async, on SQLite files or one PostgreSQL
  database. ``migrating`` brings a database to the head of each part's Alembic migrations and checks it;
  ``postgresql`` holds PostgreSQL's URL, engines and the schema of each database.
- ``write_conn``: the write path for small transactions of the stores that take it, written once for both dialects;
  ``sqlite_writer`` (plain ``sqlite3``, on the loop) and ``pg_writer`` (pooled psycopg) implement it.
- ``tables``: the kernel's own workspace tables (``migrations/``).
- ``types``: column types shared by every part's tables, and a timestamp's wire form.
- ``events``: domain events: typed, stored per workspace with a sequence number, fanned out to subscribers.
- ``outbox``: events about server-database records, written with them and delivered to the workspace.
- ``audit``: the append-only audit log of a workspace.
- ``retention``: deleting a workspace's old events and audit rows, never what is still needed.
- ``settings``: the workspace settings store (keys the parts declare, validated on write).
- ``stamps``: change counters, how a process knows what it keeps in memory is still what the database holds.

Files and processes
- ``datadir``: the data directory's layout.
- ``paths``: paths built from ids, each component one plain name, the result under its root.
- ``fileio``: atomic, owner-only file writes.
- ``secrets``: the owner-only secrets file.
- ``beneath``: touching trees a guest can write without following anything in them.
- ``procs``: naming one process for good across processes (pid and start time).
- ``runcontrol``: one driver per run, stop requests from any process, taking over a dead driver's runs.
- ``leases``: on PostgreSQL, who drives a run across hosts (session advisory locks, fenced on a lost connection).
- ``turns``: taking turns on a lock file of the data directory for work one server does for all of them.
- ``scheduled``: work a server does by itself every so often (a part's background task, started and stopped).

Confined code
- ``confine``: where code users author runs (``Confinement``, ``Scope``, ``Job``), and the trusted-host switch.
- ``disks``: size-bounded working directories for what confined code writes.
- ``guestacl``: the rig user, and letting it write a host tree without changing who owns it.

The outside
- ``wire``: JSON and text from the outside, refused at the boundary when nothing behind could store it.
- ``addresses``: which addresses the server may connect to on someone else's behalf.
- ``netaddr``: client addresses as limits count them, and the networks an operator names.
- ``commandline``: the ``hangar`` command as a person runs it on this host, for what the server tells them to run.

Small things
- ``clock``: the injectable clock.
- ``ids``: identifiers and opaque tokens.
"""
