"""English month and weekday names, which dates, recurring periods, time expressions and the
rule judge read alike: lower case, in calendar order; a name's first three letters are its
abbreviation."""

MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTH_ABBREVIATIONS = tuple(name[:3] for name in MONTHS)
WEEKDAY_ABBREVIATIONS = tuple(name[:3] for name in WEEKDAYS)
