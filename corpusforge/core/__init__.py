"""The bottom layer every package may import: errors, the config loader, file I/O with atomic writes,
progress, Beam options and the fixed Dask runner. Nothing here imports anything else of corpusforge."""
