# Sourced by bench/glob.sh and bench/grep.sh: the tree they search and the
# installing of the command-line peers they time against, written once so
# the two benches pick their tree and their tools the same way.

# Sets TREE to $GANTRY_BENCH_TREE, else ~/.cargo/registry/src (there on any
# machine that has run `cargo build`); exits when it is not a directory.
bench_tree() {
    TREE=${GANTRY_BENCH_TREE:-${CARGO_HOME:-$HOME/.cargo}/registry/src}
    if [ ! -d "$TREE" ]; then
        echo "no tree at $TREE: run 'cargo build' once (it fills ~/.cargo/registry/src) or set GANTRY_BENCH_TREE" >&2
        exit 1
    fi
}

# bench_install PACKAGE=COMMAND[,COMMAND]...: installs from Debian's
# packages each PACKAGE none of whose COMMANDs is on PATH (as root with
# apt-get), else says what is missing; the comparisons needing it skip.
bench_install() {
    local need=() spec package cmd found commands
    for spec in "$@"; do
        package=${spec%%=*}
        IFS=, read -ra commands <<<"${spec#*=}"
        found=""
        for cmd in "${commands[@]}"; do
            if command -v "$cmd" >/dev/null; then
                found=1
                break
            fi
        done
        if [ -z "$found" ]; then
            need+=("$package")
        fi
    done
    if [ ${#need[@]} -gt 0 ]; then
        if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
            echo "installing ${need[*]}" >&2
            apt-get install -y -qq "${need[@]}" >/dev/null ||
                { apt-get update -qq >/dev/null && apt-get install -y -qq "${need[@]}" >/dev/null; } ||
                echo "could not install ${need[*]}; comparisons that need them are skipped" >&2
        else
            echo "missing ${need[*]} (install them to compare); comparisons that need them are skipped" >&2
        fi
    fi
}
