"""MLPerf's own formats and trees: LoadGen's logs, published results (reading them, the round's
checker rules, accuracy, compliance and power), importing one, the results table, and writing
a submission."""
