"""The no-I/O core: what to ask of the database, and what the answer means.

Operations (:mod:`.ops`, generators of requests a dialect yields), the call builders under
every public Queue method (:mod:`.calls`), argument checks (:mod:`.checks`), URL parsing
(:mod:`.url`, :mod:`.pgurl`, both on :mod:`.dburl`) and options (:mod:`.options`), named
statements (:mod:`.sql`) and the versioned schema (:mod:`.schema`). Nothing here opens a
connection, sleeps or starts a thread, so all of it is tested without a server.

May import: :mod:`skiplock.errors`, :mod:`skiplock._core.job` and the standard library (the
dialect contract for types only). Imported by every layer above it.
"""
