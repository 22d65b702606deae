"""Executors make decisions real: launch a trial on atoms, ask it to checkpoint and exit, report events.

``base``: the protocol and its events; ``sim``: simulated trials on the virtual clock; ``launching``:
real trial processes (submitit), with ``processes`` (what a launch leaves behind) and ``job_env``;
``local``: the embedded default; ``slurm``: srun steps in the controller's allocation.

May import: ``core``, ``rundir`` (the files a trial writes and reads), ``trial`` (a launch runs
``run_trial``), ``workloads`` (the simulator's curves). Never a policy, the loop or the CLI.
"""
