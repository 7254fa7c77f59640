# shellcheck shell=bash
# What scripts/mariadb-failover and scripts/mysql-failover share: a primary and a replica
# of their own on this machine, behind a TCP front port where socat forwards to the current
# primary (MySQL drivers take one host; ProxySQL, MaxScale, HAProxy or a moved virtual IP
# do this in production), and the commands start, detach, kill, promote, stop, status, url.
# Connections made through the front before a promotion stay on the dead primary and fail.
#
# Sourced, never run. The script that sources it sets
#   NAME        its name, for messages
#   DIR         the servers' folder, as this shell sees it (wiped by start and stop)
#   P0 P1 P2    the front's, the primary's and the replica's ports
#   URL         the URL that reaches the front
# and defines
#   sql_at PORT SQL     run SQL on the server on 127.0.0.1:PORT; its result, tab-separated
#   make_pair MODE      make both servers afresh in DIR (it exists and is empty), start them,
#                       the replica replicating (MODE: sync or async), a database `test`
#                       made on the primary and received by the replica
#   detach_replica      the replica stops receiving events
#   promote_replica     (the primary is gone) the replica applies what it received, stops
#                       replicating and takes writes
# then calls failover_main "$@".

say() { echo "$NAME: $*" >&2; }
die() { say "$*"; exit 1; }

check_ports() {  # none of P0 P1 P2 is one of the machine's own servers
    local p
    for p in "$P0" "$P1" "$P2"; do
        case "$p" in
            3306 | 3307) die "port $p is one of the machine's own servers: choose other ports" ;;
        esac
    done
}

pid_of() { cat "$DIR/$1.pid" 2>/dev/null || true; }

running_pid() {  # running_pid PID: the process exists and is not a zombie waiting for its reaper
    local state
    state="$(ps -o stat= -p "$1" 2>/dev/null)" || return 1
    [ -n "$state" ] && [ "${state#Z}" = "$state" ]
}

kill_one() {  # kill_one NAME: SIGKILL, if it runs, and wait until it is gone
    local pid i
    pid="$(pid_of "$1")"
    if [ -n "$pid" ] && running_pid "$pid"; then
        kill -KILL "$pid" 2>/dev/null || true
        for ((i = 0; i < 100; i++)); do
            running_pid "$pid" || break
            sleep 0.1
        done
        say "$1 stopped (SIGKILL)"
    fi
    rm -f "$DIR/$1.pid"
}

wait_for() {  # wait_for SECONDS WHAT COMMAND...: until COMMAND succeeds
    local seconds="$1" what="$2" i
    shift 2
    for ((i = 0; i < seconds * 10; i++)); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.1
    done
    die "timed out waiting for $what"
}

answers() { sql_at "$1" "SELECT 1" >/dev/null 2>&1; }

writable() { [ "$(sql_at "$1" 'SELECT @@read_only' 2>/dev/null)" = 0 ]; }

has_test_db() { [ "$(sql_at "$P2" "SHOW DATABASES LIKE 'test'")" = test ]; }

start_front() {  # start_front PORT: the front forwards to 127.0.0.1:PORT
    kill_one front
    setsid socat "TCP-LISTEN:$P0,bind=127.0.0.1,reuseaddr,fork" "TCP:127.0.0.1:$1" \
        </dev/null >>"$DIR/front.out" 2>&1 9>&- &
    echo "$!" >"$DIR/front.pid"
    wait_for 10 "the front on $P0" answers "$P0"
}

cmd_start() {
    local mode=async
    case "${1:-}" in
        --sync) mode=sync ;;
        --async | "") mode=async ;;
        *) die "start takes --sync or --async, not '$1'" ;;
    esac
    cmd_stop
    mkdir -p "$DIR"
    echo "$mode" >"$DIR/mode"
    make_pair "$mode"
    start_front "$P1"
    say "primary on $P1, replica on $P2 replicating ($mode), front on $P0"
    echo "$URL"
}

cmd_detach() {
    [ -f "$DIR/mode" ] || die "not started"
    [ "$(cat "$DIR/mode")" = async ] || die "detach needs --async: with --sync every commit would wait"
    detach_replica
    say "replica detached: commits on the primary from now on are not replicated"
}

cmd_promote() {
    [ -f "$DIR/mode" ] || die "not started"
    if [ "${1:-}" = --lag ]; then
        [ -n "${2:-}" ] || die "--lag needs a number of seconds"
        cmd_detach
        sleep "$2"
    elif [ -n "${1:-}" ]; then
        die "promote takes --lag SECONDS, not '$1'"
    fi
    kill_one primary
    promote_replica
    start_front "$P2"
    wait_for 60 "the promoted replica to take writes" writable "$P0"
    say "replica on $P2 promoted: it is the primary, the front on $P0 points at it"
}

cmd_stop() {
    kill_one front
    kill_one replica
    kill_one primary
    rm -rf "$DIR"
}

cmd_status() {
    if writable "$P0"; then
        echo "$URL"
    else
        say "no server that takes writes behind the front on $P0"
        exit 1
    fi
}

failover_main() {
    case "${1:-}" in
        start) shift; cmd_start "$@" ;;
        detach) cmd_detach ;;
        kill) kill_one primary ;;
        promote) shift; cmd_promote "$@" ;;
        stop) cmd_stop ;;
        status) cmd_status ;;
        url) echo "$URL" ;;
        *) die "usage: $0 start [--sync|--async] | detach | kill | promote [--lag SECONDS] | stop | status | url" ;;
    esac
}
