export { ReportsModule } from './reports.module';
export type { ReportsModuleOptions } from './reports-options.interface';
export type { JobView, ReportJobData, ReportResult } from './report-job.interface';
export { runReportsDemo, formatReportsDemo } from './reports-demo';
export type { ReportsDemoResult } from './reports-demo';
