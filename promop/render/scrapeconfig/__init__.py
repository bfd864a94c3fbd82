"""ScrapeConfig (monitoring.coreos.com/v1alpha1) to a Prometheus scrape job, as upstream's generateScrapeConfig.

`scrape_config_jobs` is the generator the render pipeline calls for each selected ScrapeConfig
(one job per object); `sd` turns each service-discovery list into its Prometheus form.
"""

from promop.render.scrapeconfig.job import KIND, scrape_config_jobs

__all__ = ["KIND", "scrape_config_jobs"]
