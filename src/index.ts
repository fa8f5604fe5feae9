export * from './alarms';
export * from './prompt-serving-table';
export * from './prompt-serving-table-props';
export * from './prompt-cache';
export * from './prompt-cache-options';
export * from './prompt-governance';
export * from './prompt-serving-table-ref';
export * from './prompt-source';
