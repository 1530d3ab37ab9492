/** Types of `parse-prometheus-text-format` (it ships none): the parsed families of a scrape. */
declare module 'parse-prometheus-text-format' {
  interface PrometheusSample {
    value?: string;
    labels?: Record<string, string>;
    buckets?: Record<string, string>;
    count?: string;
    sum?: string;
  }
  interface PrometheusFamily {
    name: string;
    help: string;
    type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
    metrics: PrometheusSample[];
  }
  function parsePrometheusTextFormat(text: string): PrometheusFamily[];
  export = parsePrometheusTextFormat;
}
