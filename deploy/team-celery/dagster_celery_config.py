"""Celery settings of the LITMUS dagster-celery workers (deploy/team-celery/dagster.yaml).

``dagster_celery.app`` (the app ``celery -A dagster_celery.app worker`` starts) reads the
module ``dagster_celery_config`` when it can import it: put this folder on the worker's
PYTHONPATH. The broker comes from the environment, as it does for the daemon's launcher.
"""

import os

broker_url = os.environ["LITMUS_CELERY_BROKER"]  # redis://broker-host:6379/0
# where a run's task state is kept; the daemon's run monitoring reads it
result_backend = broker_url
# A worker takes a run only when one of its pool processes is free, so a run never waits
# behind another on a busy worker while a worker elsewhere is idle (Redis brokers only).
worker_disable_prefetch = True
worker_prefetch_multiplier = 1
# A run is one task: acknowledged when it starts, so Redis never hands a run that is still
# running to a second worker (its visibility timeout redelivers unacknowledged tasks after an
# hour). A run whose process dies is Dagster's to handle: the worker records the task failed,
# run monitoring marks the run failed, run_retries queues it again (docs/operations.md says
# what to do about a lost machine).
task_acks_late = False
# One process per run, as with the default launcher: a pool process runs one run and is
# replaced, so nothing a run loaded or kept (the code location, memory) outlives it.
worker_max_tasks_per_child = 1
# The task's state records the worker that ran it (`celery inspect`, the run's debug info).
result_extended = True
