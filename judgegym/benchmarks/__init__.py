"""Benchmarks: speed and peer-comparison scripts (env, agent and trainer throughput, judgegym
against TRL) and the judge-agreement benchmark. Each is runnable as ``python -m
judgegym.benchmarks.NAME``; the eval runner they use lives in `judgegym.evaluation`."""
