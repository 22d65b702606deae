"""Experiment specs: YAML -> validated frozen dataclasses.

``model`` holds the dataclasses (each section's keys), ``fields`` the section reader and value
parsers, ``sections`` one parser per section, ``document`` the file, its bounds and its matrix.
Every problem names its field path and the offending value; all problems of a file are collected
into one SpecError before anything runs. With them ``yaml_text`` (every YAML read from a user) and
``profile_file`` (measured speedups).

May import: ``core``, ``samplers`` and ``workloads`` (the sampler names and the trace and configuration
tables a spec is checked against).
"""

from hpcsched.spec.document import TOP_KEYS, load_experiment, load_spec, parse_experiment, read_yaml, single_spec
from hpcsched.spec.model import (Cell, ControllerSpec, Experiment, MetricSpec, ResourcesSpec, SchedulerSpec, Spec,
                                 Variant, WorkloadSpec)

__all__ = ["TOP_KEYS", "Cell", "ControllerSpec", "Experiment", "MetricSpec", "ResourcesSpec", "SchedulerSpec", "Spec",
           "Variant", "WorkloadSpec", "load_experiment", "load_spec", "parse_experiment", "read_yaml", "single_spec"]
