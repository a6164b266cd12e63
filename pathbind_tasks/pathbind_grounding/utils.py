"""PathBind-Grounding's data folder and the ``process_docs`` its tasks name (the shared grounding and faithfulness
conversions, read from ``$PATHBIND_DATA/pathbind_grounding/test.parquet``)."""

from __future__ import annotations

from pathbind.layout import Layout
from pathbind_tasks.common import faithfulness, grounding

# Both splits in one parquet file, images embedded.
LAYOUT = Layout(data=("test.parquet",), readme="pathbind_tasks/pathbind_grounding/README.md")

by_split_testa, by_split_testb = grounding.by_split_testa, grounding.by_split_testb
faithfulness_by_split = faithfulness.by_split
