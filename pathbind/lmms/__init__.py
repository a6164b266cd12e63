"""The seam between PathBind and lmms-eval: the only code that imports lmms-eval beyond its public model and
request classes (``lmms_eval.api.model``, ``lmms_eval.api.instance``), or patches it.

lmms-eval 0.7.3 has one extension point, the ``lmms_eval.models`` entry points it loads while importing
``lmms_eval.models``, and no task entry-point group. So the seam installs its patches lazily, once lmms-eval
defines what they wrap (:mod:`pathbind.lmms.watch`). Each patch acts on PathBind's own tasks, models and results
only and is lmms-eval's own function for every other call (:func:`pathbind.lmms.marks.patch`). Every patch is
listed, with the calls it claims, why and the upstream change that would make it unnecessary, in
:data:`pathbind.lmms.patches.PATCHES`, and every source it wraps or relies on is fingerprinted there.

- :mod:`~pathbind.lmms.watch`: the entry points and the import watch that installs the patches (on top: it imports
  each patch's module when lmms-eval defines its target);
- :mod:`~pathbind.lmms.marks`: what the patch modules share (how a patch is made, which tasks and models are
  PathBind's); it imports no other seam module but :mod:`~pathbind.lmms.running`;
- :mod:`~pathbind.lmms.tasks`: ``TaskManager`` (plugin task folders, ``PATHBIND_DATA``, declared metric lists and
  task variants, build errors that name the task);
- :mod:`~pathbind.lmms.queries`: what PathBind's commands ask of lmms-eval's task machinery (the task index, a task
  YAML, a task's documents), with the seam installed; :mod:`~pathbind.lmms.index`: the task index itself, read
  without building a ``TaskManager``;
- :mod:`~pathbind.lmms.running`: the task a task function runs for and its row ledger, handed to it explicitly;
- :mod:`~pathbind.lmms.evaluate`: skipped tasks and conditions, ``results["pathbind"]``;
- :mod:`~pathbind.lmms.table`: the console table; :mod:`~pathbind.lmms.cache`: ``--use_cache`` for PathBind models;
- :mod:`~pathbind.lmms.failures`: an aggregation's fault failing its task alone;
  :mod:`~pathbind.lmms.settings`: run settings no task can honour, refused in words before any model call;
- :mod:`~pathbind.lmms.outcome`: each evaluation's failure, recorded where lmms-eval's CLI runs it, in
  PathBind's command only; :mod:`~pathbind.lmms.cli`: the ``lmms_eval`` command, exiting 1 when an evaluation
  failed, refusing unknown task names with the close ones (:mod:`~pathbind.lmms.names`) and printing no credential
  (:mod:`~pathbind.lmms.redact`);
- :mod:`~pathbind.lmms.patches`: the table, and the check that this lmms-eval is one PathBind runs on.
"""
