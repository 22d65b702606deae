#!/bin/bash
# hpcsched controller job: holds the allocation, runs one hyperparameter search in it until the
# time limit, launching each trial as an srun step. Submit from the repository (or set HPCSCHED):
#
#   sbatch --export=ALL,SPEC=experiments/cifar10/cifar10-1800s.yaml slurm_templates/launch_controller.sh
#
# Lines marked EDIT are the ones to adapt; the rest is what the controller needs.
#SBATCH --job-name=hpcsched            # EDIT: name of the search (also the default run directory)
#SBATCH --nodes=2                      # EDIT: nodes of the allocation
#SBATCH --gpus-per-node=4              # EDIT: GPUs per node (an atom is resources.gpus_per_atom of them)
#SBATCH --ntasks-per-node=4            # EDIT: = GPUs per node, so every concurrent step gets CPUs
#SBATCH --cpus-per-task=1              # EDIT: CPUs per GPU (resources.cpus_per_atom per atom)
#SBATCH --mem=0                        # all memory of the nodes; steps get resources.mem_per_atom each
#SBATCH --time=01:00:00                # EDIT: the deadline: the search ends before this time limit
#SBATCH --signal=B:USR1@120            # warn the controller 120 s ahead: it checkpoints every trial
#SBATCH --requeue                      # after preemption or node failure, restart and resume
#SBATCH --output=%x-%j.out             # the controller's progress lines
#SBATCH --open-mode=append             # a requeued job appends to it: the first attempt's lines stay

set -euo pipefail
SPEC=${SPEC:?set SPEC=path/to/experiment.yaml (sbatch --export=ALL,SPEC=...)}   # EDIT or pass SPEC
RUN_DIR=${RUN_DIR:-runs/${SLURM_JOB_NAME}}     # shared storage, visible from every node; keep it for resume
HPCSCHED=${HPCSCHED:-hpcsched}                 # e.g. /path/to/.venv/bin/hpcsched

# A requeued or resubmitted job continues the search in the same run directory.
resume=()
if [[ -f "$RUN_DIR/events.jsonl" ]]; then resume=(--resume); fi

# exec: the controller replaces this shell, so the USR1 warning (B:) reaches it.
exec "$HPCSCHED" run "$SPEC" --backend slurm --run-dir "$RUN_DIR" "${resume[@]}"
