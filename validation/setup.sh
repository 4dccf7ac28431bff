#!/usr/bin/env bash
# Installs the validation apps' packages, project-locally, from the package
# registries: express-idempotency (npm) into validation/express/node_modules,
# django-idempotency-key (PyPI) into validation/django/.venv. Safe to run
# again: it installs only what is missing. The black-box tests run it.
set -euo pipefail
cd "$(dirname "$0")"

if ! [ -f express/node_modules/express-idempotency/package.json ]; then
    (cd express && npm ci --no-audit --no-fund --loglevel=error)
fi
if ! django/.venv/bin/python -c 'import django, idempotency_key' 2>/dev/null; then
    rm -rf django/.venv
    python3 -m venv django/.venv
    django/.venv/bin/pip install --quiet --disable-pip-version-check -r django/requirements.txt
fi
