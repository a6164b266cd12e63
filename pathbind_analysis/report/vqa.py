"""VQA in the paper's forms: Table 1 (the public benchmarks), Table 2 (PathBind-VQA and PathBind-PTA by diagnostic
dimension), a Table 2-form table for every other VQA task, and the image ablations (Table A.3, Figure A.1)."""

from __future__ import annotations

from pathlib import Path

from pathbind_analysis.report.ablation import ablation_blocks
from pathbind_analysis.report.document import Note, Section
from pathbind_analysis.report.paper_tables import (
    other_tasks,
    paper_table,
    pathbind_columns,
    public_columns,
    task_columns,
    vqa_tasks,
)
from pathbind_analysis.report.runs import Run

CHANCE_NOTE = ("Random Choice: the expected accuracy of a uniform guess, 100 / the item's number of options (2 for "
               "yes/no), averaged over each column's items from the first sample log of its task; its Avg. is the "
               "mean of the columns, as every Avg. here (the paper's 32.2 on Table 1, 25.0 on Table 2).")


def vqa_section(runs: list[Run], figures: Path) -> Section:
    section = Section("VQA: accuracy with the image and Multimodal Gain",
                      "Accuracy (%) with the image, and after the arrow the Multimodal Gain over the same items "
                      "without the image (VLM row); accuracy without the image (VLM-text row). Bold: best VLM value "
                      "of a column; underlined (italic in the Markdown): best VLM-text value.")
    tasks = vqa_tasks(runs)
    if not tasks:
        section.blocks.append(Note("no run has a VQA task with text-only accuracy (metric mg)"))
    tables = [(public_columns(runs), "Table 1: the public pathology VQA benchmarks"),
              (pathbind_columns(runs), "Table 2: PathBind-VQA and PathBind-PTA by diagnostic dimension"),
              *((task_columns(runs, task, ""), f"{task} (Table 2 form)") for task in other_tasks(runs))]
    for columns, title in tables:
        if columns:
            section.blocks += paper_table(runs, columns, title)
    if tasks:
        section.blocks.append(Note(CHANCE_NOTE))
        section.blocks += [Note(f"{run.name}: no VQA task in its results ({run.path})") for run in runs
                           if not any(task in run.results for task in tasks)]
    section.blocks += ablation_blocks(runs, figures)
    return section
