#!/usr/bin/env bash
# mk/layers-table.sh — mk/layers.txt as the Markdown table in docs/architecture.md's
# Layout section (run it after editing the layer rule and paste the output).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "| room | may include |"
echo "|---|---|"
grep -v '^#' mk/layers.txt | awk 'NF { r = $1; $1 = ""; sub(/^ /, ""); gsub(/ /, ", ", $0)
  printf "| `%s` | %s |\n", r, ($0 == "-" ? "nothing (the bottom)" : $0) }'
