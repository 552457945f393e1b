import { describeOutages } from './outages.ts'

describeOutages('redis')
