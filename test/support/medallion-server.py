"""OASIS's medallion TAXII 2.1 server (vendored in test/fixtures/medallion) for the interop test.

Builds the Flask application as medallion's scripts/run.py does (set_config for users, taxii and
backend, connect_to_backend, register_blueprints) with its in-memory backend, and serves it with
werkzeug (what Flask's app.run uses) on 127.0.0.1 at a port the system picks, printed as
`listening <port>` once bound. Usage: medallion-server.py CONFIG_JSON, where the config holds
`users`, `taxii`, `data` (the memory backend's JSON; "{base}" in it becomes the server's URL,
for the discovery resource's API roots) and optionally `backend`, the backend's other options
(`session_timeout`, the seconds a `next` lives).

run.py's config.py and its argument handling are not vendored (they need packages Debian lacks);
neither is `environ-config`, which the backend modules import only for their environment
configuration classes: a stand-in for the three calls they make is registered here instead.
"""

import io
import json
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures", "medallion"))


def environ_stand_in():
    """`environ.config`, `environ.var` and `environ.group` as the backends use them: at class
    definition, with nothing read from the environment (the config comes from the JSON)."""
    module = types.ModuleType("environ")
    module.config = lambda prefix=None, **_: (lambda cls: cls)
    module.var = lambda default=None, **_: default
    module.group = lambda cls, optional=False, **_: cls
    return module


sys.modules.setdefault("environ", environ_stand_in())

from werkzeug.serving import make_server  # noqa: E402

from medallion import connect_to_backend, register_blueprints, set_config  # noqa: E402
from medallion.common import APPLICATION_INSTANCE, get_application_instance_config_values  # noqa: E402


def main():
    with io.open(sys.argv[1], "r", encoding="utf-8") as infile:
        config = json.load(infile)
    server = make_server("127.0.0.1", 0, APPLICATION_INSTANCE, threaded=True)
    base = "http://127.0.0.1:{}".format(server.server_port)
    data = io.StringIO(json.dumps(config.pop("data")).replace("{base}", base))
    config["backend"] = dict(config.get("backend", {}), module_class="MemoryBackend", filename=data)

    set_config(APPLICATION_INSTANCE, "users", config)
    set_config(APPLICATION_INSTANCE, "taxii", config)
    set_config(APPLICATION_INSTANCE, "backend", config)
    APPLICATION_INSTANCE.medallion_backend = connect_to_backend(get_application_instance_config_values(APPLICATION_INSTANCE, "backend"))
    if not APPLICATION_INSTANCE.blueprints:
        register_blueprints(APPLICATION_INSTANCE)

    print("listening {}".format(server.server_port), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
