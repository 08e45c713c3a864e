#!/usr/bin/env bash
# Plants one architecture violation at a time in a scratch copy of the
# workspace and checks that the build refuses it: clippy's
# disallowed-methods (clippy.toml) for the ways to write a file by path,
# crates/assembly/tests/architecture.rs for what a family depends on, the
# state directory's own check for a name that is not a plain file name.
# One line per variant; exits non-zero if any variant gets through.
#
# Usage: tests/architecture/planted.sh
# CARGO_TARGET_DIR is reused (default: $XDG_CACHE_HOME/gantry-test/
# planted-target), and the scratch copy is kept in it at the same path, so
# the dependency graph is built once and a later run rebuilds only what
# changed.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
started=$SECONDS

target="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gantry-test/planted-target}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"
export CARGO_TARGET_DIR="$target"
# clippy.toml is the copy's own, found from each crate's folder.
unset CLIPPY_CONF_DIR
# One run at a time per target directory: they share the scratch copy.
exec 9>"$target/planted.lock"
flock 9

scratch="$target/planted-workspace"
staging="$target/planted-staging"
pristine="$target/planted-pristine"
logs="$target/planted-logs"
# What a test writes goes to a state directory of the run's own.
export GANTRY_STATE_DIR="$target/planted-state"
rm -rf "$staging" "$pristine" "$logs" "$GANTRY_STATE_DIR"
mkdir -p "$scratch" "$staging" "$pristine" "$logs"
trap 'rm -rf "$staging" "$pristine" "$GANTRY_STATE_DIR"' EXIT
# The tracked files as they are now, uncommitted changes included, synced
# into the copy the last run left (at the same path, so its build is
# reused): a file that differs is copied, with a new modification time
# that cargo sees; one that does not is left, and cargo rebuilds nothing
# for it; one that is gone goes.
tree="$(git -C "$repo" stash create)"
git -C "$repo" archive "${tree:-HEAD}" | tar -x -C "$staging"
(cd "$staging" && find . -type f -print0) | while IFS= read -r -d '' file; do
  if ! cmp -s "$staging/$file" "$scratch/$file"; then
    mkdir -p "$(dirname "$scratch/$file")"
    cp --preserve=mode "$staging/$file" "$scratch/$file"
  fi
done
(cd "$scratch" && find . -type f -print0) | while IFS= read -r -d '' file; do
  [ -e "$staging/$file" ] || rm -f "$scratch/$file"
done
# The planted crate: a family's non-test source.
crate=gantry-edit
lib=crates/edit/src/lib.rs
manifest=crates/edit/Cargo.toml
planted_files=("$lib" "$manifest" Cargo.lock)
for file in "${planted_files[@]}"; do
  mkdir -p "$pristine/$(dirname "$file")"
  cp "$scratch/$file" "$pristine/$file"
done

# The copy as it was (cp: a new modification time, so cargo rebuilds what
# the last variant planted in).
restore() {
  local file
  for file in "${planted_files[@]}"; do
    cp "$pristine/$file" "$scratch/$file"
  done
}

# Appends stdin to the copy's FILE.
plant() {
  cat >>"$scratch/$1"
}

failed=0
# check NAME PATTERN COMMAND...: caught when COMMAND fails with PATTERN in
# its output (the check meant, not an unrelated error).
check() {
  local name="$1" pattern="$2"
  shift 2
  local log
  log="$logs/$(echo "$name" | tr -c 'A-Za-z0-9\n' '_').log"
  if (cd "$scratch" && "$@") >"$log" 2>&1; then
    echo "NOT CAUGHT  $name: \`$*\` passed"
    failed=1
  elif grep -q -- "$pattern" "$log"; then
    echo "caught      $name"
  else
    echo "NOT CAUGHT  $name: \`$*\` failed, but not on the planted line (see $log)"
    failed=1
  fi
  restore
}

clippy=(cargo clippy -p "$crate" --message-format=short -- -D warnings)
# The disallowed method clippy must name, on a line of the planted file.
disallowed() {
  echo "$lib:[0-9]*:[0-9]*: error: use of a disallowed method \`$1\`"
}

# The control: the unplanted copy passes, so a failure below is the plant's.
log="$logs/control.log"
if (cd "$scratch" && "${clippy[@]}") >"$log" 2>&1; then
  echo "passes      control: the copy as it is (${clippy[*]})"
else
  echo "FAILS       control: the copy as it is fails ${clippy[*]} (see $log)"
  exit 1
fi

plant "$lib" <<'EOF'
/// Planted.
pub fn planted(a: &std::path::Path, b: &std::path::Path) -> std::io::Result<u64> {
    std::fs::copy(a, b)
}
EOF
check "std::fs::copy(a, b)" "$(disallowed std::fs::copy)" "${clippy[@]}"

plant "$lib" <<'EOF'
/// Planted.
pub fn planted(p: &std::path::Path) -> std::io::Result<std::fs::File> {
    std::fs::File::create_new(p)
}
EOF
check "std::fs::File::create_new(p)" "$(disallowed std::fs::File::create_new)" "${clippy[@]}"

plant "$lib" <<'EOF'
/// Planted.
pub fn planted(a: &std::path::Path, b: &std::path::Path) -> std::io::Result<()> {
    std::fs::hard_link(a, b)
}
EOF
check "std::fs::hard_link(a, b)" "$(disallowed std::fs::hard_link)" "${clippy[@]}"

plant "$lib" <<'EOF'
use std::fs::write as put;
/// Planted.
pub fn planted(p: &std::path::Path) -> std::io::Result<()> {
    put(p, b"x")
}
EOF
check "use std::fs::write as put; put(p, b\"x\")" "$(disallowed std::fs::write)" "${clippy[@]}"

plant "$lib" <<'EOF'
/// Planted.
pub async fn planted(p: &std::path::Path) -> std::io::Result<()> {
    tokio::fs::write(p, b"x").await
}
EOF
check "tokio::fs::write(p, b\"x\").await" "$(disallowed tokio::fs::write)" "${clippy[@]}"

plant "$lib" <<'EOF'
/// Planted.
pub fn planted(p: &std::path::Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new().write(true).open(p)
}
EOF
check "std::fs::OpenOptions::new().write(true).open(p)" "$(disallowed std::fs::OpenOptions::open)" "${clippy[@]}"

# gantry_core::state::write_file checks `name` at run time (state::plain_name):
# no type says "plain file name", so the compiler cannot refuse the call.
# Planted as a unit test that makes it, caught when the call is refused.
plant "$lib" <<'EOF'
#[cfg(test)]
mod planted {
    #[test]
    fn planted_state_write() {
        let root = std::env::temp_dir();
        gantry_core::state::write_file("planted", &root, "../escaped", b"x").unwrap();
    }
}
EOF
check "gantry_core::state::write_file(.., \"../escaped\", ..) (in a unit test: a run-time check)" \
  "is not a plain file name" cargo test -p "$crate" --lib planted_state_write

plant "$manifest" <<'EOF'

[target.'cfg(unix)'.dependencies]
gantry-fs.workspace = true
EOF
check "gantry-edit depends on gantry-fs under [target.'cfg(unix)'.dependencies]" \
  "the edit family depends on gantry-fs" cargo test -p gantry-assembly --test architecture

echo "planted.sh: $((SECONDS - started)) s (logs in $logs)"
exit "$failed"
