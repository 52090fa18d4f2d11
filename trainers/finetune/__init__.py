"""Fine-tuning a pretrained model on a task (classify, tag, generate), fully or with a parameter-efficient
method (LoRA, prefix tuning and prompt tuning from ``peft``; bottleneck adapters from ``adapters.py``).

    config.py    the ``finetune`` config section
    data.py      task records from JSONL / CSV / Parquet, the label map
    encode.py    records -> token ids and labels (sub-word alignment, response-only loss), padding
    methods.py   the task model on a base directory, with the chosen method applied
    adapters.py  Houlsby / Pfeiffer bottleneck adapters
    train.py     the loop: epochs, validation metrics, per-epoch checkpoints, the saved result
    predict.py   a fine-tuned output directory loaded back, and its predictions
"""
