"""``python -m crawler.ocr ENGINE MAX_PIXELS THREADS``: the OCR worker process
(:func:`crawler.ocr.worker.main`)."""

from crawler.ocr.worker import main

main()
