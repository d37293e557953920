"""The main job as a library: one object of settings (`JobSettings`), and `run_job`, which
builds a dataset's graph once and passes it, the trained encoders and the snapshots from
stage to stage (training, embedding, retrieval, the A/B, export). `hir run` and `hir demo`
are thin wrappers around it.

```python
from pathlib import Path
from hir_sdk.pipeline import JobSettings, run_job

settings = JobSettings.for_data("my_data", steps=300)
result = run_job(Path("my_data"), Path("job_out"), settings, progress=print)
print(result.ab.report.ab.verdict)
```

This package is the application layer, like `hir_sdk.cli`: it uses all four source roots
(`hir_sdk`, `ranking`, `export`, `evaluation`), and nothing but the CLI imports it.
"""

from hir_sdk.pipeline.job import JOB_FILE, JobResult, run_job
from hir_sdk.pipeline.progress import STAGE_SHARES, Progress
from hir_sdk.pipeline.settings import (
    DEFAULT_STEPS,
    SCHEDULED_KEYS,
    TREATMENTS,
    JobSettings,
    ScheduleWarning,
    encoder_settings,
    schedule_warning,
    scheduled_keys,
)

__all__ = [
    "DEFAULT_STEPS",
    "JOB_FILE",
    "SCHEDULED_KEYS",
    "STAGE_SHARES",
    "TREATMENTS",
    "JobResult",
    "JobSettings",
    "Progress",
    "ScheduleWarning",
    "encoder_settings",
    "run_job",
    "schedule_warning",
    "scheduled_keys",
]
