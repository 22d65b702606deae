#!/bin/bash
# hpcsched controller job: holds the allocation, runs one hyperparameter search in it until the
# time limit, launching each trial as an srun step. Check, then submit, from the repository:
#
#   hpcsched check experiments/cifar10/cifar10-1800s.yaml --variant hypersched --sbatch-script slurm_templates/launch_controller.sh
#   sbatch --export=ALL,SPEC=experiments/cifar10/cifar10-1800s.yaml,VARIANT=hypersched slurm_templates/launch_controller.sh
#
# Variables (sbatch --export=ALL,NAME=value,...): SPEC (required), VARIANT (when the spec has several),
# RUN_DIR (default runs/<spec file name>-<job id>, e.g. runs/cifar10-1800s-4242: one per job, so two jobs
# never share one; a requeued job keeps its id and resumes there), EXTEND (more time for a resubmitted
# run, e.g. 30m), HPCSCHED (the hpcsched executable), VENV (the virtual environment to activate; default ./.venv).
# To continue a run in a new job, pass its directory: RUN_DIR=runs/cifar10-1800s-4242 (add EXTEND=30m if its
# deadline passed). The job's output file names the run directory on its first line.
# Stop early, keeping every checkpoint:  scancel --signal=USR1 -b JOBID  (the controller winds down).
# Needs Slurm >= 21.08 (srun --exact) and bash >= 4.2.
#
# Lines marked EDIT are the ones to adapt; `hpcsched check ... --sbatch-script` compares them with the spec.
#SBATCH --job-name=hpcsched            # EDIT: the job's name in squeue and in its output file name
#SBATCH --nodes=2                      # EDIT: nodes of the allocation
#SBATCH --gpus-per-node=4              # EDIT: GPUs per node (an atom is resources.gpus_per_atom of them)
#SBATCH --ntasks-per-node=4            # EDIT: = GPUs per node, so every concurrent step gets CPUs
#SBATCH --cpus-per-task=4              # EDIT: CPUs per GPU (at least resources.cpus_per_atom)
#SBATCH --mem=0                        # EDIT: 0 = all memory of whole nodes; on shared nodes ask for
#                                      #   resources.mem_per_atom x GPUs per node + ~2G for the controller
#SBATCH --time=01:00:00                # EDIT: the deadline: the search ends 30 s before this time limit
#SBATCH --signal=B:USR1@120            # warn the controller 120 s ahead: it checkpoints every trial
#SBATCH --requeue                      # after preemption or node failure, restart and resume
#SBATCH --output=%x-%j.out             # the controller's progress lines
#SBATCH --open-mode=append             # a requeued job appends to it: the first attempt's lines stay
# Site-specific lines: remove the first '#' of those your cluster needs.
##SBATCH --partition=gpu                # EDIT: the GPU partition (sinfo -s)
##SBATCH --account=myproject            # EDIT: the project charged (sacctmgr show assoc user=$USER)
##SBATCH --qos=normal                   # EDIT: a QoS whose limits allow --time and the GPUs
##SBATCH --constraint=a100              # EDIT: a node feature, e.g. one GPU type for every trial

set -eo pipefail
# The environment hpcsched is installed in. EDIT: the default activates ./.venv (the README's install);
# for modules or conda, replace these lines, e.g.
#   module load python/3.11 && source ~/envs/hpcsched/bin/activate
#   source ~/miniconda3/etc/profile.d/conda.sh && conda activate hpcsched
VENV=${VENV:-.venv}
if [[ -z ${HPCSCHED:-} && -f $VENV/bin/activate ]]; then
    source "$VENV/bin/activate"
fi
set -u  # after the activation: conda's scripts read unset variables

SPEC=${SPEC:?set SPEC=path/to/experiment.yaml (sbatch --export=ALL,SPEC=...)}
spec_name=$(basename "$SPEC")
RUN_DIR=${RUN_DIR:-runs/${spec_name%.*}-${SLURM_JOB_ID:?not inside a Slurm job}}  # shared storage, visible from every node
HPCSCHED=${HPCSCHED:-hpcsched}
echo "run directory: $RUN_DIR (hpcsched status $RUN_DIR)"

variant=()
if [[ -n ${VARIANT:-} ]]; then variant=(--variant "$VARIANT"); fi

# The pre-flight check against the allocation this job really got: exit 2 with the field named.
"$HPCSCHED" check "$SPEC" ${variant[@]+"${variant[@]}"}

# A requeued or resubmitted job continues the search in the same run directory; EXTEND gives a
# resubmitted run more time (only on the first attempt: a requeue does not extend it again).
args=(run "$SPEC" --backend slurm --run-dir "$RUN_DIR" ${variant[@]+"${variant[@]}"})
if [[ -f $RUN_DIR/events.jsonl ]]; then
    args+=(--resume)
    if [[ -n ${EXTEND:-} && ${SLURM_RESTART_COUNT:-0} == 0 ]]; then args+=(--extend "$EXTEND"); fi
fi

# exec: the controller replaces this shell, so the USR1 warning (B:) reaches it.
exec "$HPCSCHED" "${args[@]}"
