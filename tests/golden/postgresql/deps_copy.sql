-- deps_add for many edges (a chord's callback), written by COPY.
COPY "skiplock_jobs_deps" (child, parent, run_on_failure) FROM STDIN
