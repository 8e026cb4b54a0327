"""Serving judgegym envs over the network (``judgegym serve``).

- `judgegym.serving.protocol`: the wire protocol (OpenEnv's messages and judgegym's
  additions as pydantic models, and their helpers), shared by the server, `RemoteEnv`
  (`judgegym.envs.remote`) and the OpenEnv client (`judgegym.integrations.openenv`).
- `judgegym.serving.server`: the FastAPI server (`ServeConfig`, `EnvServer`, `create_app`,
  `serve`).

Importing this package imports neither module (the server needs FastAPI; the protocol does not).
"""
