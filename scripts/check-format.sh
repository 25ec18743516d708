#!/usr/bin/env bash
# Fails when a C++ file of the project does not follow .clang-format (Debian's clang-format).
# Fix with: git ls-files '*.cpp' '*.hpp' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' 2>/dev/null || find src include tests bench fuzz tools -name '*.[ch]pp')
clang-format --dry-run --Werror "${files[@]}"
echo "check-format: ${#files[@]} files follow .clang-format"
