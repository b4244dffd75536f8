/** Name of the BullMQ queue of the reports. */
export const REPORTS_QUEUE = 'reports';
/** DI token of the resolved `ReportsModuleOptions`. */
export const REPORTS_OPTIONS = Symbol('reports:options');
