"""The live workbook for finance: one module per sheet, cells and references shared."""
