"""duplicate_deliveries, one module per kind of duplicate: consumer re-fetches (cut by the member's commits), share
group re-acquisitions, producer re-appends; `table` puts them into one table with the same columns."""
